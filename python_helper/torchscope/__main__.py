from .cli import main
from .launch import exit_cli

exit_cli(main())
