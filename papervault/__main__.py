from papervault.cli import main

main()
