"""The Kubernetes API side of the plugin: the node's NodeResourceTopology object (built from
the engine's state, ``topology_object``), the per-NUMA memory it carries (``node_memory``), and
a small client that creates and updates it (``api_client``, ``credentials``)."""
