"""Helm: running helm (runner), its release records (records), whose release it is (ownership), which release a
verb means (resolve), and the per-release run lock (run_lock, with the holder evidence in holders)."""
