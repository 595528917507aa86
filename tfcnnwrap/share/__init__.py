"""Results to share: a sweep as one checkable bundle (export, verify), the local library (import, library) and
sharing over git (publish, pull)."""
