"""The NRI adapter: the protocol stack (proto/, ttrpc, mux, session) and the handler that
answers containerd with the core engine's decisions."""
