# Entry points. `make` alone lists them. Every target installs what it needs
# (pinned, cached in ~/.cache/fastingest-dev) and works on a fresh clone.
.DEFAULT_GOAL := help
.PHONY: help demo test lint test-rust test-py quick bench bench-quick fuzz

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

demo: ## build, then read a local dataset with fastingest, pyarrow and polars side by side
	bash scripts/demo.sh

test: ## everything CI runs: fmt, clippy, cargo test, ruff, pytest against real servers
	bash scripts/test.sh

lint: ## cargo fmt --check, clippy -D warnings, ruff
	bash scripts/dev.sh lint

test-rust: ## the Rust tests only
	bash scripts/dev.sh test-rust

test-py: ## rebuild the extension, then all of pytest (servers included)
	bash scripts/dev.sh test-py

quick: ## inner loop: rebuild the extension, pytest without the servers, stop at the first failure
	bash scripts/dev.sh quick

bench: ## the full benchmark suite (release build; ~2 h: 7 fresh runs and 5 steady runs per cell)
	bash scripts/bench.sh

bench-quick: ## the benchmark suite's quick pass (~3 min)
	bash scripts/bench.sh --quick

fuzz: ## mutation fuzzing of every reader: 1 million inputs (~20 min; FUZZ_ARGS="--inputs N --seed S")
	bash scripts/dev.sh fuzz $(FUZZ_ARGS)
