"""A link-grammar parse worker: one JSON request per stdin line, one JSON answer per stdout line.

Run as a script (`python3 lg_worker.py OPTIONS_JSON`), preferably by Debian's
/usr/bin/python3, whose python3-link-grammar bindings it imports; under
another Python 3 it adds /usr/lib/python3/dist-packages to the end of
sys.path. It imports nothing from this package, so any interpreter with the
bindings can run it.

After loading the dictionary it prints {"ready": true}. Each request
{"text": "..."} gets {"kind": "full"|"null"|"none", "tree": str|null,
"nulls": int}: a first pass allows no null links, a second (only if the first
found nothing) allows them. The parent enforces the hard time limit by
killing this process; link-grammar's own max_parse_time is only a hint.
The C library prints diagnostics on stdout, so answers go to a private copy
of the original stdout and file descriptor 1 is pointed at stderr.
"""
import json
import os
import sys


def import_linkgrammar():
    try:
        import linkgrammar
    except ImportError:
        sys.path.append("/usr/lib/python3/dist-packages")
        import linkgrammar
    return linkgrammar


def parse(lg, sentence) -> list:
    """The linkages of a link-grammar Sentence; none when its timer ran out."""
    try:
        return list(sentence.parse())
    except lg.LG_TimerExhausted:
        return []


def main() -> int:
    options = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    answers = os.fdopen(os.dup(1), "w")
    sys.stdout.flush()
    os.dup2(2, 1)
    lg = import_linkgrammar()
    dictionary = lg.Dictionary(options.get("language", "en"))
    common = dict(verbosity=0, linkage_limit=options.get("linkage_limit", 10),
                  max_parse_time=int(options.get("max_parse_time", 2)), spell_guess=False,
                  display_morphology=False)
    strict = lg.ParseOptions(min_null_count=0, max_null_count=0, **common)
    print(json.dumps({"ready": True, "version": lg.Clinkgrammar.linkgrammar_get_version()}), file=answers, flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        text = request["text"]
        answer = {"kind": "none", "tree": None, "nulls": 0}
        linkages = parse(lg, lg.Sentence(text, dictionary, strict))
        if linkages:
            answer = {"kind": "full", "tree": linkages[0].constituent_tree(), "nulls": 0}
        else:
            word_count = max(1, len(text.split()))
            relaxed = lg.ParseOptions(min_null_count=1, max_null_count=word_count, **common)
            sentence = lg.Sentence(text, dictionary, relaxed)
            linkages = parse(lg, sentence)
            if linkages:
                answer = {"kind": "null", "tree": linkages[0].constituent_tree(),
                          "nulls": int(sentence.null_count())}
        print(json.dumps(answer), file=answers, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
