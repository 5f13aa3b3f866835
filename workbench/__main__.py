from workbench.cli.main import main

raise SystemExit(main())
