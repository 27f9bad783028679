"""Fakes and factories the tests share: the fake OpenAI-compatible server, runs and manifests."""
