"""`cky evaluate`: BLEU and chrF of hypotheses against references (decoder.evaluate).

    cky evaluate --hyp output.en --ref test.en                   # detokenized text (sacrebleu's 13a)
    cky evaluate --hyp output.tok --ref test.tok --tokenize none  # text already tokenized
"""
from __future__ import annotations

import argparse
import json

from ..evaluate import TOKENIZERS, evaluate_files


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--hyp", required=True, help="hypotheses, one sentence a line")
    parser.add_argument("--ref", required=True, nargs="+", help="reference file(s), one sentence a line")
    parser.add_argument("--tokenize", choices=TOKENIZERS, default="13a",
                        help="sacrebleu tokenizer: 13a for detokenized text (default), none for text already "
                             "tokenized")
    parser.add_argument("--lowercase", action="store_true", help="case-insensitive BLEU and chrF")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def main(args: argparse.Namespace) -> int:
    result = evaluate_files(args.hyp, args.ref, args.tokenize, args.lowercase)  # errors: decoder.cli.run
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{result['bleu_text']}  ({result['bleu_signature']})")
        print(f"{result['chrf_text']}  ({result['chrf_signature']})")
    return 0
