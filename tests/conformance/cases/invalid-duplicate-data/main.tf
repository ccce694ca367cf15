data "null_data_source" "d" {}
data "null_data_source" "d" {}
