from lyra_solver.cli import main

raise SystemExit(main())
