locals {
  v = (
    length([]) > 0
    ? "a"
    : "b"
  )
  w = [
    1,
    2
  ]
  f = max(
    1,
    2,
  )
}
