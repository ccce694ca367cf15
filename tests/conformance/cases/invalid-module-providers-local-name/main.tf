module "m" {
  source = "./m"
  providers = {
    null = TEST
  }
}
