"""The Python API's surface: `Translation` (its failure constructor, `ok`, `error`, a short repr)
and docstrings on every public method of Decoder, Translation and GrammarStore."""
import inspect

import pytest

from decoder.batch import translate_batch
from decoder.decoder import Decoder
from decoder.store import GrammarStore
from decoder.translation import Translation
from test_decoder import decoder, model  # noqa: F401  (the shared toy system)


def test_nothing_on_translation_reads_as_a_state_but_is_a_constructor():
    assert not hasattr(Translation, "failed")
    for name, member in vars(Translation).items():
        if isinstance(member, classmethod):  # a constructor is named by what it makes, not by a state
            assert not name.startswith(("is_", "has_")) and name not in ("ok", "error", "failed"), name
    assert isinstance(inspect.getattr_static(Translation, "ok"), property)


def test_a_failure_is_not_ok_and_says_why():
    t = Translation.failure("la casa", "RuntimeError: boom")
    assert (t.ok, t.error, bool(t), t.source, t.text, t.tree) == (False, "RuntimeError: boom", False, "la casa", "", "")
    assert t.score == float("-inf") and t.features == {} and t.derivation is None


def test_a_translation_is_ok_and_its_repr_is_short(decoder):  # noqa: F811
    t = decoder.translate("la casa verde es pequeña")
    assert (t.ok, t.error, bool(t)) == (True, None, True)
    text = repr(t)
    assert text == f"Translation(source='la casa verde es pequeña', text={t.text!r}, score={t.score:.4f}, ok=True)"
    long = decoder.translate("la casa verde es pequeña " * 20)
    assert len(str(long.derivation)) > 2000  # what the generated repr printed
    assert len(repr(long)) <= 200 and repr(long).endswith("ok=True)") and "..." in repr(long)
    failure = Translation.failure("la casa " * 50, "RuntimeError: " + "x" * 500)
    assert len(repr(failure)) <= 200 and "ok=False" in repr(failure) and "error='RuntimeError: " in repr(failure)


def test_a_job_that_raises_gives_a_failure_naming_the_sentence(decoder):  # noqa: F811
    def job(d, sentence):
        if "perro" in sentence:
            raise RuntimeError("forced")
        return d.translate(sentence)
    results = translate_batch(decoder, ["la casa", "el perro"], job=job)
    assert results[0].ok and not results[1].ok
    assert (results[1].source, results[1].error) == ("el perro", "RuntimeError: forced")


def public_methods(cls):
    """{name: function} of the public methods and properties a class defines (or inherits from a
    class other than object)."""
    from functools import cached_property

    found = {}
    for klass in reversed(cls.__mro__[:-1]):
        for name, member in vars(klass).items():
            if name.startswith("_"):
                continue
            if isinstance(member, (classmethod, staticmethod)):
                member = member.__func__
            elif isinstance(member, property):
                member = member.fget
            elif isinstance(member, cached_property):
                member = member.func
            if inspect.isfunction(member):
                found[name] = member
    return found


@pytest.mark.parametrize("cls", [Decoder, Translation, GrammarStore])
def test_every_public_method_has_a_docstring(cls):
    methods = public_methods(cls)
    assert len(methods) >= 2 and ("translate" in methods) == (cls is Decoder)
    missing = sorted(name for name, function in methods.items() if not (function.__doc__ or "").strip())
    assert not missing, f"{cls.__name__}: no docstring on {', '.join(missing)}"


def test_kbest_says_why_it_can_return_fewer_than_k():
    doc = Decoder.kbest.__doc__
    assert "fewer than k" in doc and "pop_limit" in doc and "distinct" in doc
