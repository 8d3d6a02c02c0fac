# The two commands of the README. Both set everything up first (idempotent).
.PHONY: demo test setup bench

setup:
	@./scripts/setup.sh

demo: setup
	.venv/bin/zendo serve

test: setup
	.venv/bin/python -m pytest

bench: setup
	.venv/bin/zendo bench
