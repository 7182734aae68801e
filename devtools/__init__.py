"""Development helpers shared by the tests, the benchmarks and the demo: the
loopback storage servers (``servers``) and an emulated cloud link in front of
them (``cloud``). Not part of the installed package."""
