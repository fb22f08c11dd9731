"""Questions asked of an instance and its plans by solving again: why a job starts when it does
(`explain`), a changed cluster (`whatif`), the price of capacity (`prices`), solvers side by side
(`compare`)."""
