import os
import sys

from .cli import main
from .launch import exit_cli

try:
    code = main()
    sys.stdout.flush()  # (a closed pipe shows here, not in the interpreter's teardown)
except BrokenPipeError:
    # the reader went away (`summary g.json | head`): no stack, and nothing more to flush
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    code = 128 + 13  # as the shell reports a writer stopped by SIGPIPE
except KeyboardInterrupt:  # Ctrl-C: one line, as every other way this command ends
    print("torchscope: interrupted", file=sys.stderr)
    code = 128 + 2  # as the shell reports a command stopped by SIGINT
exit_cli(code)
