"""`cky evaluate`: BLEU and chrF of hypotheses against references (decoder.evaluate).

    cky evaluate --hyp output.en --ref test.en                   # detokenized text (sacrebleu's 13a)
    cky evaluate --hyp output.tok --ref test.tok --tokenize none  # text already tokenized
    cky evaluate --hyp test.out --ref test.tok.en --tokenize none --lowercase \
                 --text-hyp test.detok --raw-ref test.en           # both: as `cky train` reports them

With --raw-ref, the score of --hyp against --ref (tokenized, lowercased, as a system's
training data is) comes with sacreBLEU's default score (13a tokenization, cased) of the
detokenized, recased output (--text-hyp; default: --hyp) against the raw references, which
is what published scores of other systems are.
"""
from __future__ import annotations

import argparse
import json

from ..errors import UsageError
from ..evaluate import TOKENIZERS, evaluate_files


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--hyp", required=True, help="hypotheses, one sentence a line")
    parser.add_argument("--ref", required=True, nargs="+", help="reference file(s), one sentence a line")
    parser.add_argument("--tokenize", choices=TOKENIZERS, default="13a",
                        help="sacrebleu tokenizer: 13a for detokenized text (default), none for text already "
                             "tokenized")
    parser.add_argument("--lowercase", action="store_true", help="case-insensitive BLEU and chrF")
    parser.add_argument("--raw-ref", nargs="+", metavar="REF",
                        help="raw reference file(s): also report sacreBLEU's default score (13a, cased) of "
                             "--text-hyp against them")
    parser.add_argument("--text-hyp", metavar="FILE",
                        help="the detokenized, recased hypotheses scored against --raw-ref (default: --hyp)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def main(args: argparse.Namespace) -> int:
    if args.text_hyp and not args.raw_ref:
        raise UsageError("--text-hyp is scored against --raw-ref REF: give it too")
    result = evaluate_files(args.hyp, args.ref, args.tokenize, args.lowercase)  # errors: decoder.cli.run
    if args.raw_ref:  # sacreBLEU's defaults: what other systems' scores are
        result["sacrebleu"] = evaluate_files(args.text_hyp or args.hyp, args.raw_ref)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{result['bleu_text']}  ({result['bleu_signature']})")
        print(f"{result['chrf_text']}  ({result['chrf_signature']})")
        if args.raw_ref:
            cased = result["sacrebleu"]
            print(f"detokenized, cased, against the raw references: {cased['bleu_text']}  "
                  f"({cased['bleu_signature']})")
            print(f"detokenized, cased, against the raw references: {cased['chrf_text']}  "
                  f"({cased['chrf_signature']})")
    return 0
