"""`cky serve --config CONFIG [--port 8000] [--host 127.0.0.1] [--max-tokens N] [--tokenize LANG]`: the
derivation viewer."""
from __future__ import annotations

import argparse
import logging
import sys

from ..data.tokenize import LANGUAGES as TOKENIZER_LANGUAGES
from ..serve import DEFAULT_MAX_KBEST, DEFAULT_MAX_TOKENS
from .arguments import count


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="decoder config (TOML; its keys: docs/configuration.md)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=count(0, maximum=65535), default=8000, help="port (default 8000)")
    parser.add_argument("--max-tokens", type=count(1), default=DEFAULT_MAX_TOKENS,
                        help=f"longest sentence accepted, in words (default {DEFAULT_MAX_TOKENS}; longer: HTTP 413)")
    parser.add_argument("--max-kbest", type=count(1), default=DEFAULT_MAX_KBEST,
                        help=f"largest k-best list a request may ask for (default {DEFAULT_MAX_KBEST})")
    parser.add_argument("--tokenize", choices=TOKENIZER_LANGUAGES, metavar="LANG",
                        help="tokenize and lowercase each sentence as the corpus was (LANG: "
                             "es or en); default: sentences come tokenized")


def main(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from ..serve.app import create_app
    except ImportError as error:
        print(f"cky serve: {error.name} is missing: pip install 'cky-decoder[serve]'", file=sys.stderr)
        return 1
    from ..decoder import Decoder

    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s", stream=sys.stderr)
    decoder = Decoder.from_config(args.config)  # a bad config, store or LM: one line (decoder.cli.run)
    logging.getLogger("cky.serve").info("loaded %r in %.2f s; http://%s:%d/", decoder, decoder.load_seconds,
                                        args.host, args.port)
    app = create_app(decoder, max_tokens=args.max_tokens, max_kbest=args.max_kbest, tokenize_as=args.tokenize)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def run(argv=None) -> int:
    """`python -m decoder.serve ARGS`: the same as `cky serve ARGS`."""
    from . import main as cky

    return cky(["serve", *(sys.argv[1:] if argv is None else argv)])
