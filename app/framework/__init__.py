"""The scheduling framework: plugin interfaces, statuses, cycle state, node info and the runtime."""
