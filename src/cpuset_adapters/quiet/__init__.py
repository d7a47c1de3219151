"""Quiet CPUs on the node (issue 43): interrupts, idle states and governors written for the
containers that asked, every original kept in a journal first, and put back."""
