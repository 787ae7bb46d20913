"""Model backends: ``openai`` (any OpenAI-compatible server) and ``local``
(in-process llama.cpp). Import them lazily: ``local`` needs llama-cpp-python."""
