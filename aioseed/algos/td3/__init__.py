"""TD3: twin delayed deep deterministic policy gradients (Fujimoto et al. 2018), SAC's sibling."""
