# Thin wrappers: tasks.py is the single entry point (it needs only Python 3.11).
PY ?= python3

.PHONY: demo test lint fmt bench relevance install
demo:
	$(PY) tasks.py demo
test:
	$(PY) tasks.py test
lint:
	$(PY) tasks.py lint
fmt:
	$(PY) tasks.py fmt
bench:
	$(PY) tasks.py bench
install:
	$(PY) tasks.py install
relevance:
	$(PY) tasks.py relevance
