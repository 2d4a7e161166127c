"""Made-up data on purpose: simulated runs and pathologies, the scenario suite, the bundled example, the
real small model's sampler, its word problems and the live demo. Only the CLI (and tests) import it."""
