locals {
  l = ["a", "b"]
  m = { for k in concat(local.l, []) ||
    false ? [] : local.l : k == "a" ?
    "A" : k
  => k... if k !=
  "c" }
  t = [for k in local.l : k != "a" &&
  k != "b"]
}
