module "a" {
  source = "./a"
}
