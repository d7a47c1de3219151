"""Why a request to the API server failed: the stable reasons the API client raises and the
metrics count by. Apart from the client so that the metrics name them without importing it
(and its modules) on a node where neither the publisher nor the events are on."""

from __future__ import annotations

from typing import Final

REASONS: Final = ("unreachable", "timeout", "unauthorized", "forbidden", "crd-missing",
                  "conflict", "invalid", "server-error", "credentials", "error")
"""Why a request failed: no connection (refused, reset, TLS), no answer in time, 401, 403,
404 for the collection (the CRD is not installed), 409, 422, 429 or 5xx, the token could not be
read, anything else."""

EVENT_REASONS: Final = ("not-found", *(r for r in REASONS if r != "crd-missing"))
"""Why an event request failed: as :data:`REASONS`, but a 404 means the event (or its
namespace) is not there, there being no CRD to miss."""
