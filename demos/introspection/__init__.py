"""What the compilers and the hardware did, read from standard artefacts: profiler traces,
Inductor's generated code, jaxpr / StableHLO / optimized HLO. Imports only the engine."""
