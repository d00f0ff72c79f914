"""`python -m torchscope.server`: the language server over stdio."""

from .server import main

main()
