module "a" {
  source = "./a"
  count  = 2
}
