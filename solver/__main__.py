from solver.cli import main

raise SystemExit(main())
