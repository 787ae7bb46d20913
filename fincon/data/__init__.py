"""Point-in-time data: price sources, validation and the market view.

Its names load on first use (:mod:`fincon.lazy`, PEP 562): importing the
package costs nothing until a name is used.
"""

from typing import TYPE_CHECKING

from fincon.lazy import face

if TYPE_CHECKING:
    from fincon.data.aliases import NAMES as NAMES
    from fincon.data.dataset import (
        check_out as check_out,
    )
    from fincon.data.dataset import (
        item_table as item_table,
    )
    from fincon.data.dataset import (
        manifest_dict as manifest_dict,
    )
    from fincon.data.dataset import (
        open_dataset as open_dataset,
    )
    from fincon.data.dataset import (
        summary_rows as summary_rows,
    )
    from fincon.data.dataset import (
        write_dataset as write_dataset,
    )
    from fincon.data.events.audio import require_binary as require_binary
    from fincon.data.events.generator import (
        DEFAULT_END as DEFAULT_END,
    )
    from fincon.data.events.generator import (
        DEFAULT_START as DEFAULT_START,
    )
    from fincon.data.events.generator import (
        DEFAULT_TICKERS as DEFAULT_TICKERS,
    )
    from fincon.data.events.generator import (
        GeneratorConfig as GeneratorConfig,
    )
    from fincon.data.events.generator import (
        Planted as Planted,
    )
    from fincon.data.events.generator import (
        generate as generate,
    )
    from fincon.data.events.generator import (
        write_corpus as write_corpus,
    )
    from fincon.data.events.loaders.directory import write_jsonl_gz as write_jsonl_gz
    from fincon.data.importers.common import ImportOptions as ImportOptions
    from fincon.data.inputs import (
        SAMPLE as SAMPLE,
    )
    from fincon.data.inputs import (
        corpus_tickers as corpus_tickers,
    )
    from fincon.data.inputs import (
        open_events as open_events,
    )
    from fincon.data.inputs import (
        open_inputs as open_inputs,
    )
    from fincon.data.lexicon import document_shares as document_shares
    from fincon.data.prices import validate_bars as validate_bars
    from fincon.data.terms import FUNCTION as FUNCTION
    from fincon.data.terms import STOP as STOP
    from fincon.data.transcription.ct2 import ct2_to_whisper_checkpoint as ct2_to_whisper_checkpoint

__getattr__, __dir__ = face(__name__, __file__)
