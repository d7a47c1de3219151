"""The placement service: the use cases every source of change calls (a runtime adapter, the CRI
inventory, the hotplug watcher), protocol-neutral.

It owns the engine and commits its plans, remembers what happened to each container, logs every
decision once (an event name plus fields), feeds one statistics object and the observer, and
keeps the background updates. It imports the core and the standard library only; adapters
translate their wire messages into its calls and its answers back.
"""
