# The two entry points of the README, and the benchmark.
.PHONY: demo test bench bench-quick

demo:
	bash scripts/demo.sh

test:
	bash scripts/test.sh

bench:
	bash scripts/bench.sh

bench-quick:
	bash scripts/bench.sh --quick
