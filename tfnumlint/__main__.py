from tfnumlint.cli import main

raise SystemExit(main())
