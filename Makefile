# The two commands of the README: `make demo` and `make test`.
# Each installs what it needs first; everything built is cached and ignored by git.
PYTHON ?= python3
PIP_STAMP := build/.installed

.PHONY: install demo test bench data data-small clean

$(PIP_STAMP): pyproject.toml setup.py $(wildcard ext/*.pyx ext/*.pxd ext/*.hh build_support/*.py)
	bash models/kenlm/fetch_sources.sh
	bash models/kenlm/build_tools.sh
	$(PYTHON) -m pip install -q "setuptools>=77" wheel cython numpy
	$(PYTHON) -m pip install -q --no-build-isolation -e '.[test,serve,cluster,plot]'
	mkdir -p build && touch $(PIP_STAMP)

install: $(PIP_STAMP)

demo: install
	$(PYTHON) -m decoder.cli demo

test: install
	$(PYTHON) -m pytest -q tests

data: install
	$(PYTHON) -m decoder.cli data bible-es-en

data-small: install
	$(PYTHON) -m decoder.cli data bible-es-en --small

bench: install
	$(PYTHON) -m decoder.cli bench

clean:
	rm -rf build decoder/_ext/*.so ext/*.c ext/*.cpp
