"""Observability adapters: Prometheus metrics, the ``/metrics``, ``/healthz`` and ``/readyz``
HTTP endpoint, and structured logging. Import the modules themselves (``metrics`` renders its own
text exposition, ``logging`` a stdlib formatter for event names plus fields)."""
