from kcli.cli import main

main()
