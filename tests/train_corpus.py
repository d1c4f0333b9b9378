"""A small generated Spanish-English parallel corpus of raw, cased, punctuated sentences (for the
`cky train` tests): real English words, so that link-grammar parses the English side."""
from __future__ import annotations

import random
from pathlib import Path

SUBJECTS = [("el hombre", "the man", "m"), ("la mujer", "the woman", "f"), ("el niño", "the boy", "m"),
            ("la niña", "the girl", "f"), ("el perro", "the dog", "m"), ("el rey", "the king", "m"),
            ("la reina", "the queen", "f"), ("Juan", "John", None), ("María", "Mary", None),
            ("Pedro", "Peter", None)]
ADJECTIVES = [("viejo", "vieja", "old"), ("joven", "joven", "young"), ("bueno", "buena", "good"),
              ("grande", "grande", "big"), ("pequeño", "pequeña", "small")]
VERBS = [("ve", "sees"), ("toma", "takes"), ("ama", "loves"), ("come", "eats"), ("encuentra", "finds"),
         ("abre", "opens")]
OBJECTS = [("la casa", "the house", "f"), ("el pan", "the bread", "m"), ("la ciudad", "the city", "f"),
           ("el libro", "the book", "m"), ("la puerta", "the door", "f"), ("el agua", "the water", "m")]
PLACES = [("en la ciudad", "in the city"), ("en la casa", "in the house"), ("hoy", "today"),
          ("con el rey", "with the king")]


def noun_phrase(rng: random.Random, choices) -> tuple[str, str]:
    es, en, gender = rng.choice(choices)
    if gender is not None and rng.random() < 0.4:
        masculine, feminine, english = rng.choice(ADJECTIVES)
        article, noun = en.split(" ", 1)
        return f"{es} {masculine if gender == 'm' else feminine}", f"{article} {english} {noun}"
    return es, en


def clause(rng: random.Random) -> tuple[str, str]:
    subject_es, subject_en = noun_phrase(rng, SUBJECTS)
    verb_es, verb_en = rng.choice(VERBS)
    object_es, object_en = noun_phrase(rng, OBJECTS)
    es, en = f"{subject_es} {verb_es} {object_es}", f"{subject_en} {verb_en} {object_en}"
    if rng.random() < 0.3:
        place_es, place_en = rng.choice(PLACES)
        es, en = f"{es} {place_es}", f"{en} {place_en}"
    return es, en


def sentence_pair(rng: random.Random) -> tuple[str, str]:
    es, en = clause(rng)
    if rng.random() < 0.25:
        more_es, more_en = clause(rng)
        es, en = f"{es}, y {more_es}", f"{en}, and {more_en}"
    return es[0].upper() + es[1:] + ".", en[0].upper() + en[1:] + "."


def write_corpus(directory: Path, name: str, pairs: int, seed: int) -> tuple[Path, Path]:
    """DIRECTORY/NAME.es and NAME.en with `pairs` generated pairs."""
    rng = random.Random(seed)
    generated = [sentence_pair(rng) for _ in range(pairs)]
    source, target = directory / f"{name}.es", directory / f"{name}.en"
    source.write_text("".join(es + "\n" for es, _ in generated), encoding="utf-8")
    target.write_text("".join(en + "\n" for _, en in generated), encoding="utf-8")
    return source, target
