"""The torchscope language server (`python -m torchscope.server`); see docs/server.md."""
