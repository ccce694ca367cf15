module "1bad" {
  source = "./x"
}
