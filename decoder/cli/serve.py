"""`cky serve --config CONFIG [--port 8000] [--host 127.0.0.1] [--max-tokens N] [--tokenize LANG] ...`: the
derivation viewer (decoder.serve; the request limits and host checks: decoder.serve.app)."""
from __future__ import annotations

import argparse
import logging
import sys

from ..data.tokenize import LANGUAGES as TOKENIZER_LANGUAGES
from ..serve.limits import (DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CHARS, DEFAULT_MAX_KBEST, DEFAULT_MAX_QUEUE,
                            DEFAULT_MAX_TOKENS, LOCAL_HOSTS)
from ..settings import MAX_KBEST
from .arguments import count


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="decoder config (TOML; its keys: docs/configuration.md)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=count(0, maximum=65535), default=8000, help="port (default 8000)")
    parser.add_argument("--max-tokens", type=count(1), default=DEFAULT_MAX_TOKENS,
                        help=f"longest sentence accepted, in words (default {DEFAULT_MAX_TOKENS}; longer: HTTP 413)")
    parser.add_argument("--max-kbest", type=count(1, maximum=MAX_KBEST), default=DEFAULT_MAX_KBEST,
                        help=f"largest k-best list a request may ask for (default {DEFAULT_MAX_KBEST}, "
                             f"at most {MAX_KBEST})")
    parser.add_argument("--max-chars", type=count(1), default=DEFAULT_MAX_CHARS,
                        help=f"longest sentence accepted, in characters (default {DEFAULT_MAX_CHARS}; "
                             "longer: HTTP 413)")
    parser.add_argument("--max-body-bytes", type=count(1), default=DEFAULT_MAX_BODY_BYTES,
                        help=f"largest request body, in bytes (default {DEFAULT_MAX_BODY_BYTES}; larger: HTTP 413)")
    parser.add_argument("--max-queue", type=count(1), default=DEFAULT_MAX_QUEUE,
                        help=f"sentences waiting or decoding at most (default {DEFAULT_MAX_QUEUE}; "
                             "one more: HTTP 503)")
    parser.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                        help=f"a host name the server answers to in the Host and Origin headers, besides "
                             f"{', '.join(LOCAL_HOSTS)} and --host (repeatable; '*': any, e.g. behind a proxy "
                             "that checks them); other hosts: HTTP 400, pages of other origins: HTTP 403")
    parser.add_argument("--tokenize", choices=TOKENIZER_LANGUAGES, metavar="LANG",
                        help="(config without [languages]) tokenize and lowercase each sentence as the corpus "
                             "was (LANG: es or en); default: sentences come tokenized. A config with [languages] "
                             "takes raw text and answers detokenized, recased text")


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
    app = create_app(decoder, max_tokens=args.max_tokens, max_kbest=args.max_kbest, tokenize_as=args.tokenize,
                     max_chars=args.max_chars, max_body_bytes=args.max_body_bytes, max_queue=args.max_queue,
                     allowed_hosts=[args.host, *args.allowed_host])
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def run(argv=None) -> int:
    """`python -m decoder.serve ARGS`: the same as `cky serve ARGS`."""
    from . import main as cky

    return cky(["serve", *(sys.argv[1:] if argv is None else argv)])
