"""Builders of test inputs shared by every test suite, as plain functions: the core's pod and
container facts (``facts``), NRI messages (``nri``) and kubectl-shaped pod manifests
(``kube``). Each module offers ``pod`` and ``container``; import the one a test speaks."""
