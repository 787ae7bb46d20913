"""Point-in-time data: price sources, validation and the market view."""

from typing import TYPE_CHECKING

from fincon.lazy import face

#: the sample's ticker every command trades when none is given (fincon.config's default; a source's
#: "unknown ticker" line names it as the default); here, so that neither pays for pandas to read it
DEFAULT_TICKER = "TSLA"
#: the kinds of event a corpus holds (fincon.data.events.model's; here, so that a config's check of a
#: source name pays nothing for pandas at --help)
SOURCES: tuple[str, ...] = ("news", "10-K", "10-Q", "analyst_note", "earnings_call")

if TYPE_CHECKING:
    from fincon.data.aliases import NAMES as NAMES
    from fincon.data.dataset import (
        check_out as check_out,
        item_table as item_table,
        manifest_dict as manifest_dict,
        open_dataset as open_dataset,
        resolve_dataset as resolve_dataset,
        summary_rows as summary_rows,
        write_dataset as write_dataset,
    )
    from fincon.data.events.audio import require_binary as require_binary
    from fincon.data.events.generator import (
        DEFAULT_END as DEFAULT_END,
        DEFAULT_START as DEFAULT_START,
        DEFAULT_TICKERS as DEFAULT_TICKERS,
        GeneratorConfig as GeneratorConfig,
        Planted as Planted,
        generate as generate,
    )
    from fincon.data.events.loaders.directory import write_jsonl_gz as write_jsonl_gz
    from fincon.data.events.sample_folder import (
        check_sample_out as check_sample_out,
        write_corpus as write_corpus,
    )
    from fincon.data.importers.common import ImportOptions as ImportOptions
    from fincon.data.inputs import (
        SAMPLE as SAMPLE,
        corpus_tickers as corpus_tickers,
        open_events as open_events,
        open_inputs as open_inputs,
    )
    from fincon.data.lexicon import (
        LoughranMcDonald as LoughranMcDonald,
        document_shares as document_shares,
        tone_label as tone_label,
    )
    from fincon.data.prices import validate_bars as validate_bars
    from fincon.data.terms import FUNCTION as FUNCTION, STOP as STOP
    from fincon.data.transcription.ct2 import ct2_to_whisper_checkpoint as ct2_to_whisper_checkpoint

__getattr__, __dir__ = face(__name__, __file__)
