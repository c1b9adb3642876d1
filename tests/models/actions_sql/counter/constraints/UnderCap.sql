-- Counter.tla: UnderCap (state constraint)
x < Cap
