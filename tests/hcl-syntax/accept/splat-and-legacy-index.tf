locals {
  l = [{ a = [1] }]
  x = local.l[*].a
  y = local.l.0.a
  z = local.l.*.a
}
