"""`python -m zendo` runs the `zendo` command."""
from zendo.cli import main

main()
