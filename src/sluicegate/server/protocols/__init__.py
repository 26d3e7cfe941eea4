"""The front ends' protocols: each adapter reads a run's chunk stream after the output processors."""
