"""The built-in processors, one module each; import them from `sluicegate.processors`."""
