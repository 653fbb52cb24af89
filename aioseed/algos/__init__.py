"""Algorithm math and agents. The math modules are pure functions over tensors."""
