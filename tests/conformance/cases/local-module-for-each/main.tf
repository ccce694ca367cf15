module "a" {
  source   = "./a"
  for_each = toset(["x", "y"])
}
