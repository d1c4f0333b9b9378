"""`cky ...` in a subprocess with a decoder slowed down on purpose, for the interruption tests.

    python tests/translate_runner.py translate --config ...      (with PYTHONPATH=the repository)

Environment: CKY_TEST_DEAF_WORD: a sentence with this word first spends ~CKY_TEST_DEAF_SECONDS in C
code that does not look at signals (as the compiled search can); CKY_TEST_SLEEP: seconds of sleep
per sentence.
"""
import hashlib
import os
import sys
import time

from decoder.decoder import Decoder

DEAF_WORD = os.environ.get("CKY_TEST_DEAF_WORD")
SLEEP = float(os.environ.get("CKY_TEST_SLEEP", "0"))
_original = Decoder.translate


def _rounds_for(seconds: float) -> int:
    started, rounds = time.perf_counter(), 20000
    hashlib.pbkdf2_hmac("sha256", b"x", b"y", rounds)
    return int(rounds * seconds / max(time.perf_counter() - started, 1e-6))


ROUNDS = _rounds_for(float(os.environ.get("CKY_TEST_DEAF_SECONDS", "4"))) if DEAF_WORD else 0


def translate(self, sentence):
    if DEAF_WORD and DEAF_WORD in str(sentence).split():
        hashlib.pbkdf2_hmac("sha256", b"x", b"y", ROUNDS)
    if SLEEP:
        time.sleep(SLEEP)
    return _original(self, sentence)


Decoder.translate = translate

if __name__ == "__main__":
    from decoder.cli import main

    sys.exit(main(sys.argv[1:]))
