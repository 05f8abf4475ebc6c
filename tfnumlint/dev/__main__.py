from tfnumlint.dev.cli import main

raise SystemExit(main())
