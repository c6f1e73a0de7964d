"""Live Yjs documents: one pycrdt Doc per document per process, persisted before broadcast."""
