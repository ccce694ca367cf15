module "a" {
  source = "./b"
}
