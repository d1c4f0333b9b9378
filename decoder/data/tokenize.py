"""Tokenizers and detokenizers, and the registry that picks one for a language.

The registry (`TOKENIZERS`, `tokenizer_for(language)`): `en` and `es` are the
tokenizers of the Bible corpus below; `zh` segments raw Chinese (Traditional or
Simplified) into Simplified words with decoder.data.cuv.ChineseSegmenter (OpenCC
`t2s`, then jieba; the `data` extra), after steps 1-3 below (Latin letters
lowercased, parentheses as Penn tokens); any other language gets `default`, the
same Unicode-aware rules without the English clitic step (words are runs of
letters and digits of any script, every other non-space character is a token
alone), with a warning naming the language and the tokenizer. Scripts written
without spaces between words (Chinese, Japanese, Thai) are not segmented by
`default`: a run of such characters stays one token.

Tokenization (`tokenize(text, language)`), in this order:

1. Unicode NFC; typographic quotes become ASCII: “ ” „ « » -> `"`, ‘ ’ ‚ -> `'`;
   the em dash — becomes the token `--`, the en dash – a hyphen.
2. Everything is lowercased (both languages, consistently; no truecasing).
3. Parentheses become the Penn tokens `-LRB-` and `-RRB-`, so that every
   token can be a leaf of a Penn-bracketed tree.
4. English only: the possessive clitic is split off Penn-style
   ("god's" -> "god 's", "servants'" -> "servants '"); negative contractions
   stay whole ("don't"), as link-grammar's dictionary knows them.
5. Tokens are: numbers with inner separators ("3:16", "1,000"), words of
   letters/digits with inner hyphens or apostrophes ("burnt-offering"), the
   clitic "'s", and any other non-space character alone (punctuation:
   `, . ; : ! ? ¿ ¡ " '` ...).

`detokenize(tokens, language)` undoes the spacing (attaches punctuation,
pairs double quotes, rejoins clitics, restores parentheses and dashes) and
capitalizes the first letter of each sentence; other casing is not restored.
"""
from __future__ import annotations

import re
import sys
import unicodedata
from dataclasses import dataclass
from typing import Callable

QUOTE_MAP = str.maketrans({
    "“": '"', "”": '"', "„": '"', "«": '"', "»": '"', "‟": '"',
    "‘": "'", "’": "'", "‚": "'", "‛": "'", "–": "-",
})
TOKEN_RE = re.compile(r"""
      \d+(?:[.,:]\d+)+              # numbers with separators: 3:16 1,000
    | [^\W_]+(?:[-'][^\W_]+)*       # words, with inner hyphens or apostrophes
    | '[sS](?![^\W_])               # the possessive clitic 's
    | --                            # dash
    | \S                            # any other character alone
""", re.VERBOSE)
POSSESSIVE_S_RE = re.compile(r"(?<=[^\W_])'[sS](?![^\W_])")
POSSESSIVE_PLURAL_RE = re.compile(r"(?<=[^\W_]s)'(?![^\W_])")
LANGUAGES = ("en", "es", "zh")
SEGMENTED_LANGUAGES = ("zh",)  # written without spaces between words: a segmenter finds the words
DEFAULT_TOKENIZER = "default"  # the registry's tokenizer for any language without its own
BRACKET_TOKENS = {"(": "-LRB-", ")": "-RRB-"}
BRACKET_TEXT = {token: text for text, token in BRACKET_TOKENS.items()}


def normalize(text: str, lowercase: bool = True) -> str:
    """Steps 1 and 2 of the module docstring: NFC, ASCII quotes, dashes, lowercase."""
    text = unicodedata.normalize("NFC", text).translate(QUOTE_MAP).replace("—", " -- ")
    return text.lower() if lowercase else text


def tokenize(text: str, language: str, lowercase: bool = True) -> list[str]:
    """Split `text` (language "en" or "es") into tokens, lowercased unless `lowercase` is False.

    Casing never changes where tokens split, so the cased tokens (given to
    the English parser, which uses capitals to recognize names) correspond
    one to one to the lowercased ones.
    """
    if language not in LANGUAGES and language != DEFAULT_TOKENIZER:
        raise ValueError(f"tokenize: unknown language {language!r} (expected one of {', '.join(LANGUAGES)})")
    text = normalize(text, lowercase)
    if language in SEGMENTED_LANGUAGES:
        return [BRACKET_TOKENS.get(word, word) for word in chinese_segmenter().segment(text)]
    if language == "en":
        text = POSSESSIVE_S_RE.sub(lambda match: " " + match.group(0), text)
        text = POSSESSIVE_PLURAL_RE.sub(" '", text)
    return [BRACKET_TOKENS.get(token, token) for token in TOKEN_RE.findall(text)]


_SEGMENTER = None


def chinese_segmenter():
    """The process's one ChineseSegmenter (jieba's dictionary loads in about a second), made on first use;
    a missing package is a RuntimeError naming what to install."""
    global _SEGMENTER
    if _SEGMENTER is None:
        from .cuv import ChineseSegmenter

        try:
            _SEGMENTER = ChineseSegmenter()
        except ImportError as error:
            raise RuntimeError(f"the zh tokenizer needs opencc and jieba (pip install 'cky-decoder[data]' or "
                               f"pip install opencc jieba): {error}") from None
    return _SEGMENTER


NO_SPACE_BEFORE = {",", ".", ";", ":", "!", "?", ")", "'s", "%"}
NO_SPACE_AFTER = {"(", "¿", "¡"}


def detokenize(tokens: list[str], language: str = "en") -> str:
    """Join tokens into readable text (see the module docstring); Chinese words are joined without spaces."""
    if language in SEGMENTED_LANGUAGES:
        return "".join(BRACKET_TEXT.get(token, token) for token in tokens)
    pieces: list[str] = []
    glue_next = True          # no space before the next token
    open_double_quote = False
    previous = ""
    for token in tokens:
        token = BRACKET_TEXT.get(token, token)
        if token == "--":
            pieces.append("—")
            glue_next = True
            previous = token
            continue
        if token == '"':
            if open_double_quote:
                pieces.append('"')
                glue_next = False
            else:
                if not glue_next:
                    pieces.append(" ")
                pieces.append('"')
                glue_next = True
            open_double_quote = not open_double_quote
            previous = token
            continue
        attach = glue_next or token in NO_SPACE_BEFORE or (
            language == "en" and token == "'" and previous.endswith("s"))
        if not attach:
            pieces.append(" ")
        if _starts_sentence(pieces):
            token = token[:1].upper() + token[1:]
        pieces.append(token)
        glue_next = token in NO_SPACE_AFTER
        previous = token
    return "".join(pieces)


def _starts_sentence(pieces: list[str]) -> bool:
    """True when the text so far ends a sentence (or is empty, ignoring quotes and spaces)."""
    text = "".join(pieces[-6:]).rstrip(' "¿¡(—')
    if not "".join(pieces).strip(' "¿¡(—'):
        return True
    return text.endswith((".", "!", "?"))


@dataclass(frozen=True)
class Tokenizer:
    """A registered tokenizer: `name` is what configs and system.json record; `version` changes
    whenever the tokens it makes of some text change, so that `cky train` tokenizes a corpus again
    (the tokenize stage's fingerprint holds it) and system.json says which tokens a system was
    trained on."""
    name: str
    description: str
    version: int = 1

    def tokenize(self, text: str, lowercase: bool = True) -> list[str]:
        return tokenize(text, self.name, lowercase)

    def detokenize(self, tokens: list[str]) -> str:
        return detokenize(tokens, "en" if self.name == "en" else self.name)


TOKENIZERS = {
    "en": Tokenizer("en", "English: NFC, ASCII quotes, lowercased, punctuation split, possessive 's split, "
                          "Penn brackets"),
    "es": Tokenizer("es", "Spanish: NFC, ASCII quotes, lowercased, punctuation split, Penn brackets"),
    "zh": Tokenizer("zh", "Chinese: NFC, ASCII quotes, Latin lowercased, OpenCC t2s to Simplified, jieba "
                          "dictionary words (no HMM), Penn brackets", version=2),
    DEFAULT_TOKENIZER: Tokenizer(DEFAULT_TOKENIZER, "Unicode default: NFC, ASCII quotes, lowercased, words of "
                                                    "letters/digits of any script, other characters alone, "
                                                    "Penn brackets"),
}


def tokenizer_versions(names) -> dict[str, int]:
    """Each named tokenizer's version (Tokenizer.version), as a run's fingerprint and system.json record them."""
    return {name: TOKENIZERS[name].version for name in names}


def tokenizer_for(language: str, warn: Callable[[str], None] | None = None) -> Tokenizer:
    """The registry's tokenizer of `language`; for a language without its own, `default`, after
    calling `warn` (default: a warning on stderr) with a message naming both."""
    if language in TOKENIZERS and language != DEFAULT_TOKENIZER:
        return TOKENIZERS[language]
    message = (f"no tokenizer for language {language!r} (known: {', '.join(LANGUAGES)}): using the "
               f"Unicode-aware `{DEFAULT_TOKENIZER}` tokenizer (decoder.data.tokenize)")
    if warn is None:
        print(f"warning: {message}", file=sys.stderr)
    else:
        warn(message)
    return TOKENIZERS[DEFAULT_TOKENIZER]
